"""The retrieval benchmark's own corpus: documents a chat group might keep, and questions whose answers
sit in known passages. Written for this benchmark.

Each question names a phrase of its answer (`answer`); a retrieved chunk counts when it contains that
phrase, so the judgment does not depend on where the splitter cut. `kind` is "keyword" (the question
shares words with the answer) or "paraphrase" (other words for the same thing).
"""

from __future__ import annotations

from typing import NamedTuple


class Question(NamedTuple):
    lang: str
    text: str
    answer: str
    kind: str


ZH_DOCS: list[tuple[str, str]] = [
    ("群规", """本群是星火编程学习交流群，欢迎大家提问和分享经验。

一、发言规范：禁止发布广告、二维码和与编程无关的推广链接。第一次违规由管理员私聊提醒，第二次违规禁言二十四小时，第三次违规直接移出群聊。

二、提问方式：提问前请先搜索群文件和精华消息。提问时附上完整的报错信息、操作系统版本和你已经尝试过的方法，不要只发一句“在吗”。代码请用代码块或者在线剪贴板分享，不要发手机拍屏幕的照片。

三、夜间免打扰：每天晚上十一点到第二天早上七点是免打扰时间，这段时间请不要艾特全体成员。紧急问题可以私聊值班管理员。

四、资源分享：分享电子书和课程时请注明来源，不得分享盗版资源。群文件里的资料仅供学习，禁止转卖。

五、管理员名单：群主阿明负责整体事务，小雨负责新人审核，老周负责群文件整理。对管理有意见可以在每月的意见收集帖里留言。"""),
    ("服务器常见问题", """我们的练习服务器地址是 lab.xinghuo.dev，端口 2222，用 SSH 登录。新成员的账号由小雨在入群审核通过后三天内开通，初始密码会通过私聊发送，首次登录后必须修改。

如果忘记密码，请在群里找老周重置，重置后的临时密码有效期为一小时。连续输错密码五次，账号会被锁定三十分钟。

每个账号的磁盘配额是二十GB，超过配额后无法写入新文件。可以用 du 命令查看目录占用，清理不需要的虚拟环境和缓存能释放很多空间。

服务器每周日凌晨两点到四点例行维护，期间可能无法连接，正在运行的任务会被终止，请提前保存工作。

服务器上禁止运行挖矿程序和长期占满CPU的任务，发现后会直接封禁账号。需要跑大型训练任务的同学请提前在群里申请GPU时段，每人每周最多十二小时。"""),
    ("线下活动通知", """第七届星火编程马拉松将于十月十八日至十九日在城东创业园三号楼举办，比赛持续二十四小时，主题是“让生活更方便的小工具”。

报名截止日期是十月十日晚上十二点，每队二到四人，也可以个人报名由组委会随机组队。报名费每人五十元，活动结束后全额退还给按时到场的选手，缺席不退。

现场提供午餐、晚餐和夜宵，素食选手请在报名表里注明。请自带笔记本电脑和充电器，现场有插座和无线网络，网络名称是 Spark-Hack，密码在签到时发放。

评审标准：创意占百分之三十，完成度占百分之四十，演示效果占百分之三十。一等奖奖金三千元，二等奖两千元，三等奖一千元，另设最佳新人奖一名。

交通：地铁五号线创业园站B出口步行五分钟，园区内停车免费但车位有限，建议乘坐公共交通。"""),
    ("会员与费用说明", """星火学习群分为普通成员和进阶会员两种。普通成员免费，可以参与群聊、下载公开资料和参加线上分享会。

进阶会员每年收费一百八十元，可以使用练习服务器的GPU时段、参加每月一次的代码评审、获得线下活动优先报名资格。学生凭学生证可以享受半价优惠。

会费通过群公告里的收款二维码支付，付款后请把截图发给群主阿明登记，一般在两个工作日内开通权限。

退费规则：开通后七天内无理由全额退款；超过七天按剩余月份比例退款；因违反群规被移出的会员不予退款。

发票：需要发票的会员请在付款时备注单位名称和税号，发票在每月月底统一开具，以电子发票形式发到邮箱。"""),
    ("新手学习路线", """零基础的同学建议先学 Python，第一周掌握变量、条件判断、循环和函数，第二周学习列表、字典和文件读写，第三周做一个命令行记账本小项目巩固知识。

学完基础后可以选择方向：想做网站的学习 HTML、CSS 和一个后端框架，例如 Django 或 FastAPI；想做数据分析的学习 pandas 和 matplotlib；想做人工智能的先补线性代数和概率论，再学习 PyTorch。

推荐每天至少练习一小时，遇到问题先自己调试二十分钟再提问，这样进步最快。每周六晚上八点群里有线上答疑，由老周和几位助教轮流主持，可以把一周积累的问题集中提出来。

群文件的“入门资料”文件夹里有整理好的电子书、练习题和往期答疑录屏，按编号顺序学习即可。完成路线上的三个小项目后，可以申请成为助教。"""),
    ("代码评审规范", """每月最后一个周日下午两点进行代码评审，进阶会员可以提交一个不超过五百行的项目。提交方式是在评审表格里填写仓库地址和想重点讨论的问题，截止时间是评审前一天中午十二点。

评审时每个项目有十五分钟：作者先用三分钟介绍设计思路，然后评审人逐条提出意见，最后留五分钟自由讨论。

评审重点包括：命名是否清楚、函数是否过长、有没有重复代码、错误处理是否完整、有没有测试。评审意见会整理成文档发到群文件的“评审记录”文件夹。

请尊重每一位作者，意见针对代码而不是针对人。如果对意见有不同看法，可以在讨论环节说明理由，最终是否修改由作者自己决定。"""),
]

EN_DOCS: list[tuple[str, str]] = [
    ("Club handbook", """Welcome to the Riverside Photography Club. We meet every second Thursday of the month at 7 pm in the back room of the Maple Street library. Newcomers are welcome to attend two meetings for free before deciding to join.

Membership costs 40 dollars per year for adults and 15 dollars for students under 25. Dues are collected in January; members who join later in the year pay a reduced amount based on the remaining months.

Each meeting starts with a short talk by a member or a guest, followed by a critique session where members show up to three photos each. Please bring your images on a USB stick in JPEG format, no larger than 10 megabytes per file.

The club owns two studio lights, a backdrop stand and a tripod that members may borrow for up to one week. Sign the loan sheet held by the equipment officer, Dana, and return the gear clean and complete.

Our annual exhibition takes place in May at the town hall. Every member may submit two framed prints; the selection committee announces the chosen works by mid April."""),
    ("Helpdesk FAQ", """How do I get access to the shared drive? Send a request to the helpdesk with your manager in copy. Access is usually granted within one business day.

My laptop will not connect to the office Wi-Fi. First forget the network named Corp-Secure, then reconnect and sign in with your usual account. If it still fails, bring the laptop to room 214 between 9 and 11 in the morning.

Passwords expire every 90 days. You receive a reminder email two weeks before the expiry date. A new password must be at least 14 characters long and cannot repeat any of your last five passwords.

If you lose your badge, report it immediately at the front desk so it can be blocked. A replacement badge costs 10 dollars and is ready the next working day.

Printers on every floor accept jobs from the secure print queue. Your document is held until you tap your badge on the printer, and unclaimed jobs are deleted after 24 hours.

For software installation, open a ticket in the self-service portal and choose the program from the approved catalog. Programs outside the catalog need a security review that takes about two weeks."""),
    ("Travel policy", """Business trips must be approved by your team lead before any booking is made. Use the company travel portal for flights and hotels so that costs are charged to the right project.

Economy class is the standard for flights under six hours. For longer flights, premium economy may be booked with the approval of a department head.

The hotel allowance is 150 dollars per night in most cities and 220 dollars per night in high-cost cities such as London, New York and Tokyo. Choose hotels within walking distance of the office you visit when possible.

Meals are reimbursed up to 60 dollars per day with itemized receipts. Alcohol is never reimbursed. Taxi rides are fine when public transport is unavailable or unsafe, for example late at night.

Submit your expense report within 30 days after returning. Late reports are reviewed by finance and may be rejected. Reimbursements are paid with the next monthly salary."""),
    ("Library rules", """Library cards are free for residents of the county. Bring a photo ID and a proof of address such as a utility bill to any branch to register.

You may borrow up to 12 items at a time. Books can be kept for three weeks and renewed twice online if nobody has reserved them. DVDs and video games are lent for one week and cannot be renewed.

Late returns cost 25 cents per day for each book and one dollar per day for each DVD, up to a maximum of 10 dollars per item. Cards with more than 20 dollars in unpaid fines are blocked until the fines are paid.

Quiet study rooms on the second floor can be booked for two hours per day through the website. Group rooms on the ground floor hold up to eight people.

The main branch is open from 9 am to 8 pm on weekdays and from 10 am to 5 pm on Saturdays. All branches are closed on Sundays and public holidays. The returns box outside the main entrance is open all night."""),
    ("Gym membership terms", """The monthly membership is 35 dollars and includes access to the weight room, the cardio area and all group classes. An annual membership paid in advance costs 350 dollars.

New members get a free introduction session with a trainer during the first month. Personal training after that costs 45 dollars per hour, or 200 dollars for a pack of five sessions.

You can freeze your membership for up to three months per year for medical reasons or travel, with a doctor's note or booking confirmation. No fee is charged during a freeze.

To cancel, give written notice at the reception or by email at least 30 days before the next billing date. Memberships are not refunded for months already started.

Lockers are available for the day; bring your own lock and empty the locker before you leave, as locks left overnight are cut. Towels can be rented for one dollar.

The pool is closed for cleaning every Monday morning until noon. Children under 14 may use the pool only with an adult."""),
    ("Volunteer guide", """Thank you for volunteering at the community food bank. Shifts last three hours and run in the morning from 9 to 12 and in the afternoon from 1 to 4, Tuesday to Saturday.

Sign up for shifts in the online calendar at least two days in advance. If you cannot come, remove your name from the calendar so that the coordinator, Priya, can find a replacement.

Wear closed shoes and clothes that can get dirty. Gloves and aprons are provided at the entrance. For food safety reasons, long hair must be tied back and jewellery removed while sorting fresh produce.

New volunteers attend a one-hour orientation on their first day, covering hygiene, lifting technique and the sorting system by color labels: green for fresh food, blue for canned goods and red for items to discard.

Volunteers under 16 must come with a parent or guardian. School groups are welcome on Fridays with at least two accompanying teachers.

After 50 hours of service you receive a certificate that can be used for school or job applications."""),
]

QUESTIONS: list[Question] = [
    # --- Chinese, sharing words with the answer ---
    Question("zh", "发广告第三次违规会怎样？", "第三次违规直接移出群聊", "keyword"),
    Question("zh", "夜间免打扰时间是几点到几点？", "晚上十一点到第二天早上七点", "keyword"),
    Question("zh", "分享电子书需要注意什么？", "分享电子书和课程时请注明来源", "keyword"),
    Question("zh", "谁负责新人审核？", "小雨负责新人审核", "keyword"),
    Question("zh", "练习服务器的地址和端口是什么？", "端口 2222", "keyword"),
    Question("zh", "忘记密码怎么重置？", "请在群里找老周重置", "keyword"),
    Question("zh", "磁盘配额是多少？", "磁盘配额是二十GB", "keyword"),
    Question("zh", "服务器什么时候例行维护？", "每周日凌晨两点到四点例行维护", "keyword"),
    Question("zh", "申请GPU时段每周最多多少小时？", "每人每周最多十二小时", "keyword"),
    Question("zh", "编程马拉松在哪里举办？", "城东创业园三号楼", "keyword"),
    Question("zh", "马拉松报名截止日期是哪天？", "报名截止日期是十月十日", "keyword"),
    Question("zh", "报名费多少，会退还吗？", "报名费每人五十元", "keyword"),
    Question("zh", "马拉松一等奖奖金多少？", "一等奖奖金三千元", "keyword"),
    Question("zh", "评审标准里完成度占多少？", "完成度占百分之四十", "keyword"),
    Question("zh", "进阶会员每年收费多少？", "进阶会员每年收费一百八十元", "keyword"),
    Question("zh", "学生有优惠吗？", "学生凭学生证可以享受半价优惠", "keyword"),
    Question("zh", "会员退费规则是什么？", "开通后七天内无理由全额退款", "keyword"),
    Question("zh", "怎么开发票？", "备注单位名称和税号", "keyword"),
    Question("zh", "零基础第一周学什么？", "第一周掌握变量、条件判断、循环和函数", "keyword"),
    Question("zh", "想做数据分析应该学什么？", "数据分析的学习 pandas 和 matplotlib", "keyword"),
    Question("zh", "线上答疑在什么时候？", "每周六晚上八点群里有线上答疑", "keyword"),
    Question("zh", "代码评审什么时候进行？", "每月最后一个周日下午两点进行代码评审", "keyword"),
    Question("zh", "评审项目最多多少行？", "不超过五百行的项目", "keyword"),
    Question("zh", "评审意见整理后放在哪里？", "评审记录", "keyword"),
    # --- Chinese, in other words ---
    Question("zh", "在群里打广告被抓到几次会被踢？", "第三次违规直接移出群聊", "paraphrase"),
    Question("zh", "半夜可以@所有人吗？", "晚上十一点到第二天早上七点", "paraphrase"),
    Question("zh", "连续登录失败会被封多久？", "账号会被锁定三十分钟", "paraphrase"),
    Question("zh", "硬盘空间满了怎么办？", "清理不需要的虚拟环境和缓存", "paraphrase"),
    Question("zh", "能在服务器上挖比特币吗？", "禁止运行挖矿程序", "paraphrase"),
    Question("zh", "比赛现场管饭吗？", "现场提供午餐、晚餐和夜宵", "paraphrase"),
    Question("zh", "坐地铁怎么去比赛场地？", "地铁五号线创业园站B出口", "paraphrase"),
    Question("zh", "交钱以后多久能用上会员功能？", "两个工作日内开通权限", "paraphrase"),
    Question("zh", "被踢出群的会员能拿回会费吗？", "因违反群规被移出的会员不予退款", "paraphrase"),
    Question("zh", "卡住的时候应该马上问别人吗？", "先自己调试二十分钟再提问", "paraphrase"),
    Question("zh", "怎样才能当上助教？", "完成路线上的三个小项目后，可以申请成为助教", "paraphrase"),
    Question("zh", "不同意评审人的建议必须改吗？", "最终是否修改由作者自己决定", "paraphrase"),
    # --- English, sharing words with the answer ---
    Question("en", "When does the photography club meet?", "every second Thursday of the month", "keyword"),
    Question("en", "How much is the student membership of the club?", "15 dollars for students under 25", "keyword"),
    Question("en", "What format should photos for the critique session be in?", "JPEG format", "keyword"),
    Question("en", "Who is the equipment officer?", "equipment officer, Dana", "keyword"),
    Question("en", "When is the annual exhibition?", "annual exhibition takes place in May", "keyword"),
    Question("en", "How do I get access to the shared drive?", "manager in copy", "keyword"),
    Question("en", "How often do passwords expire?", "Passwords expire every 90 days", "keyword"),
    Question("en", "How long must a new password be?", "at least 14 characters", "keyword"),
    Question("en", "What does a replacement badge cost?", "replacement badge costs 10 dollars", "keyword"),
    Question("en", "When are unclaimed print jobs deleted?", "unclaimed jobs are deleted after 24 hours", "keyword"),
    Question("en", "What is the hotel allowance in London?", "220 dollars per night", "keyword"),
    Question("en", "What is the daily meal reimbursement limit?", "up to 60 dollars per day", "keyword"),
    Question("en", "When must I submit my expense report?", "within 30 days after returning", "keyword"),
    Question("en", "How many items can I borrow from the library?", "borrow up to 12 items", "keyword"),
    Question("en", "What is the late fee for DVDs?", "one dollar per day for each DVD", "keyword"),
    Question("en", "What are the opening hours of the main branch on Saturdays?", "10 am to 5 pm on Saturdays", "keyword"),
    Question("en", "How much is the annual gym membership?", "annual membership paid in advance costs 350 dollars", "keyword"),
    Question("en", "How much does personal training cost?", "45 dollars per hour", "keyword"),
    Question("en", "How do I cancel my gym membership?", "at least 30 days before the next billing date", "keyword"),
    Question("en", "When is the pool closed for cleaning?", "closed for cleaning every Monday morning", "keyword"),
    Question("en", "How long are volunteer shifts at the food bank?", "Shifts last three hours", "keyword"),
    Question("en", "What do the green labels mean in the sorting system?", "green for fresh food", "keyword"),
    Question("en", "What do volunteers get after 50 hours?", "After 50 hours of service you receive a certificate", "keyword"),
    Question("en", "Can school groups volunteer?", "School groups are welcome on Fridays", "keyword"),
    # --- English, in other words ---
    Question("en", "Can I try out the photo club before paying?", "attend two meetings for free", "paraphrase"),
    Question("en", "Can I borrow the club's tripod?", "borrow for up to one week", "paraphrase"),
    Question("en", "My notebook can't get online at the office, what should I do?", "forget the network named Corp-Secure", "paraphrase"),
    Question("en", "I misplaced my ID card, what now?", "If you lose your badge, report it immediately", "paraphrase"),
    Question("en", "Can I fly business class on a long trip?", "premium economy may be booked", "paraphrase"),
    Question("en", "Will the company pay for my beer at dinner?", "Alcohol is never reimbursed", "paraphrase"),
    Question("en", "How do I sign up for a library card?", "Bring a photo ID and a proof of address", "paraphrase"),
    Question("en", "Can I keep a novel longer than three weeks?", "renewed twice online", "paraphrase"),
    Question("en", "Can I pause my gym subscription while I'm abroad?", "freeze your membership for up to three months", "paraphrase"),
    Question("en", "Can my 10 year old swim alone?", "Children under 14 may use the pool only with an adult", "paraphrase"),
    Question("en", "I can't make my shift at the food bank, what should I do?", "remove your name from the calendar", "paraphrase"),
    Question("en", "What should I wear when helping out?", "Wear closed shoes", "paraphrase"),
]

#: Everyday words for distractor passages (other topics): most of a distractor sentence comes from here.
_GENERAL_ZH = """天气 晴朗 下雨 周末 公园 散步 超市 水果 苹果 香蕉 蔬菜 牛奶 面包 早餐 晚饭 厨房 做饭 米饭 面条
饺子 火锅 咖啡 茶叶 朋友 家人 父母 孩子 老师 学校 作业 考试 成绩 假期 旅行 火车 飞机 机场 酒店 风景 照片
电影 音乐 唱歌 跳舞 足球 篮球 跑步 游泳 健身 医院 医生 感冒 发烧 药店 银行 工资 房租 邻居 小区 楼下 快递
外卖 手机 电脑 充电 屏幕 游戏 小说 杂志 新闻 报纸 城市 乡村 河流 山上 森林 花园 小狗 小猫 鸟儿 春天 夏天
秋天 冬天 雪花 温度 空调 衣服 裤子 鞋子 帽子 商场 打折 价格 便宜 昂贵 排队 地图 路口 红灯 公交 出租车 自行车
生日 礼物 蛋糕 聚会 婚礼 节日 春节 中秋 月饼 灯笼 烟花 历史 文化 博物馆 画家 诗人 故事 回忆 梦想 工作 同事
老板 会议室 报告 计划 预算 客户 合同 项目 进度 加班 休息 睡觉 闹钟 窗户 阳台 植物 浇水 阳光 海边 沙滩 贝壳"""
_GENERAL_EN = """weather sunny rain weekend park walk market fruit apple banana vegetables milk bread breakfast dinner
kitchen cooking rice noodles soup coffee tea friends family parents children teacher school homework exam grades
holiday journey train airplane airport landscape photo movie music singing dancing football basketball running
swimming hospital doctor fever pharmacy bank salary rent neighbor apartment package delivery phone computer
battery screen game novel magazine news newspaper city village river mountain forest garden dog cat bird spring
summer autumn winter snow temperature heating clothes trousers shoes hat mall discount price cheap expensive queue
map crossing traffic bus bicycle birthday gift cake party wedding festival history culture museum painter poet
story memory dream colleague boss report plan budget customer contract project progress overtime rest sleep alarm
window balcony plant water sunlight beach sand shell ocean island bridge tower castle village farmer harvest"""
GENERAL_ZH = _GENERAL_ZH.split()
GENERAL_EN = _GENERAL_EN.split()
